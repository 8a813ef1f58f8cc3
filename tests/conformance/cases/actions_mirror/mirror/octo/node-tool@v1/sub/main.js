console.log("main ran");
