from lib.util import greet

def test_greet():
    assert greet([]) == "nobody"   # TODO add more cases
