#!/bin/bsh
echo ok $1
