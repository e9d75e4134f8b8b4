#!/bin/bash
echo orange guava kernel
