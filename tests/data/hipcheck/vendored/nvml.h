// A project that vendors a header under a toolkit name: including it is the project's choice.
#pragma once
typedef int vendored_handle;
