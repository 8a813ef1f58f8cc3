// A stand-in for a telemetry watcher: runs until it is interrupted.
const fs = require('fs');
process.on('SIGINT', () => {
  console.log('watch: interrupted, ' + ['shutting', 'down'].join(' '));
  process.exit(0);
});
fs.writeFileSync(process.env.CONFORMANCE_SCRATCH + '/watching', String(process.pid));
console.log('watch: started');
setInterval(() => {}, 1000);
