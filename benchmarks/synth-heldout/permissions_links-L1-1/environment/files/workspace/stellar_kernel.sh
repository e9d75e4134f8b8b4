#!/bin/bash
echo pear strawberry grand
