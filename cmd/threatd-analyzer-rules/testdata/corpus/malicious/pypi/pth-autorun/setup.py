from setuptools import setup
setup(name="pth-autorun", version="0.1", packages=[], data_files=[("", ["autorun.pth"])])
