const fs = require("fs");
const said = `${process.env.INPUT_GREETING} from node ${2 * 21}`;
console.log(said);
fs.appendFileSync(process.env.GITHUB_OUTPUT, `said=${said}\n`);
