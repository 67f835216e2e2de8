from setuptools import setup
setup(name="cli-config", version="1.4.0", packages=["cliconfig"])
