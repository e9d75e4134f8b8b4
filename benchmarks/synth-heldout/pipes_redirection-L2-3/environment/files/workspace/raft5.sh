#!/bin/bash
echo 'ok shelter curious spindle'
echo 'WARN seattle azure indigo' >&2
echo 'ok strawberry windy melody'
echo 'ok seoul patient barcelona'
echo 'ok marsh pale frosty'
