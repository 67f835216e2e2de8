from setuptools import setup
setup(name="env-to-collector", version="0.2.1", packages=["envcollector"])
