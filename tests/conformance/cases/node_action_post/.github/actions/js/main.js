const fs = require('fs');
const message = process.env.INPUT_MESSAGE;
console.log(`main: ${message} count=${process.env['INPUT_MAX_COUNT']} workspace=${process.cwd() === process.env.GITHUB_WORKSPACE}`);
fs.appendFileSync(process.env.GITHUB_OUTPUT, `length=${message.length}\n`);
fs.appendFileSync(process.env.GITHUB_STATE, `started=${6 * 7}\n`);
fs.appendFileSync(process.env.GITHUB_ENV, `FROM_NODE=node-env\n`);
