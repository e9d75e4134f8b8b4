import sys
from lib import util

def main():
    # TODO: parse arguments properly
    print(util.greet(sys.argv[1:]))
