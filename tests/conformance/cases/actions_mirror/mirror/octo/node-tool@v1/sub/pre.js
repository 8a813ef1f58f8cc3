console.log(`pre ran for ${process.env.GITHUB_ACTION_REPOSITORY}`);
