#!/bin/bash
echo 'ERROR apple capsule gentle' >&2
echo 'ok tallinn river banana'
echo 'ok silent cable dock'
