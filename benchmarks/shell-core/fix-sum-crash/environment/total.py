import sys


def read_numbers(path):
    with open(path) as f:
        return [int(line) for line in f.read().split("\n")]


def main():
    numbers = read_numbers(sys.argv[1])
    print(sum(numbers))


if __name__ == "__main__":
    main()
