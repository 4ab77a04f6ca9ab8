pytest test_quickstart.py
