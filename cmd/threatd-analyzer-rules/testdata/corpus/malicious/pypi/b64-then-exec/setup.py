from setuptools import setup
setup(name="b64-then-exec", version="1.1", packages=["bte"])
