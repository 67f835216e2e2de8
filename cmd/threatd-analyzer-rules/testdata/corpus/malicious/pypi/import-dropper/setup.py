from setuptools import setup
setup(name="import-dropper", version="1.0.2", packages=["importdropper"])
