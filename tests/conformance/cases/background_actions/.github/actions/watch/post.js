console.log('watch: post ' + 'ran');
