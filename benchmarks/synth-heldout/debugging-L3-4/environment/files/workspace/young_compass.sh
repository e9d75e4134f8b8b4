#!/bin/bsh
echo started $1
