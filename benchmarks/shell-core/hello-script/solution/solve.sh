#!/bin/bash
cat > /workspace/hello.sh <<'SCRIPT'
#!/bin/bash
echo "Hello, ${1:-world}!"
SCRIPT
chmod +x /workspace/hello.sh
