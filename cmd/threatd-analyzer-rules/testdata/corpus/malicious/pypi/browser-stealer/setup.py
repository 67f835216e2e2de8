from setuptools import setup
setup(name="browser-stealer", version="2.0.0", packages=["bstealer"])
