from setuptools import setup
setup(name="py-reverse-shell", version="0.1", packages=["rshell"])
