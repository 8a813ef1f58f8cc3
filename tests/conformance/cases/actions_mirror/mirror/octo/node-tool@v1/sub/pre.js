require("fs").writeFileSync(`${process.env.CONFORMANCE_SCRATCH}/pre-ran`, "yes"); console.log(`pre ran for ${process.env.GITHUB_ACTION_REPOSITORY}`);
