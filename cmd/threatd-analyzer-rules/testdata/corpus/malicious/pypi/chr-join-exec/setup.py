from setuptools import setup
setup(name="chr-join-exec", version="0.3", packages=["chrjoin"])
