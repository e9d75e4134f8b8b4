#!/bin/bash
# Prints the environment, minus the variables bash itself sets at start-up.
env | grep -vE '^(PWD|SHLVL|_|OLDPWD)=' | LC_ALL=C sort
