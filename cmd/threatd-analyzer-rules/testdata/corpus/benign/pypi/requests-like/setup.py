from setuptools import setup, find_packages
setup(name="requests-like", version="2.32.3", packages=find_packages(), install_requires=["urllib3"])
