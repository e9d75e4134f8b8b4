#!/bin/sh
echo top
