from setuptools import setup
setup(name="remote-exec", version="0.1.2", packages=["remoteexec"])
