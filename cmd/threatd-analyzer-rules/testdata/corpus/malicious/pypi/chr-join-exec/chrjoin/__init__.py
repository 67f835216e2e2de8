exec(''.join(chr(c) for c in [112, 114, 105, 110, 116, 40, 49, 41]))
