console.log("open 7-19");
