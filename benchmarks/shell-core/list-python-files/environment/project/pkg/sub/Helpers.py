# pkg/sub/Helpers.py
