console.log("post ran");
