#!/bin/bash
cd /workspace/webapp
git rm -q --cached secrets.env
echo 'secrets.env' >> .gitignore
git add .gitignore
git commit -q -m "Ignore secrets"
