from setuptools import setup
setup(name="clipper", version="0.4", packages=["clipper"])
