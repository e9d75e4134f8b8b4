#!/bin/bash
echo 'peach orange naples'
echo 'calm brisbane bakery'
echo 'apple plain turbine'
