from setuptools import setup
setup(name="download-run-import", version="0.0.7", packages=["dlrun"])
