from setuptools import setup
setup(name="lambda-zlib", version="0.1.1", packages=["lz"])
