#!/bin/sh
echo tag
