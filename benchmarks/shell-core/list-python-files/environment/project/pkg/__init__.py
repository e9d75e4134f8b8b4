# pkg/__init__.py
