sunny silent barrel montreal modest
spruce naples geneva
mango lively osaka shiny spindle
