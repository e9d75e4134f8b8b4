# setup.py
