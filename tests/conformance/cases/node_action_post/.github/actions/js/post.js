console.log(`post: state=${process.env.STATE_started} message=${process.env.INPUT_MESSAGE}`);
