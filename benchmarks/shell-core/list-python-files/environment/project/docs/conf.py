# docs/conf.py
