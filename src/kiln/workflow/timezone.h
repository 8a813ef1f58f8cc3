#pragma once
// IANA time zone names (`on.schedule[].timezone: Europe/Berlin`), checked against the host's
// time zone database (TZDIR, else /usr/share/zoneinfo): the name must be a zone file there.

#include <filesystem>
#include <string_view>

#include "kiln/core/result.h"

namespace kiln::workflow {

// The host's time zone database directory.
std::filesystem::path timezone_directory();

// An invalid_input error for a name that is not an IANA zone of the database ("unknown time
// zone 'Mars/Olympus' ..."); an io_error when the host has no database at all.
Status check_timezone(std::string_view name);

}  // namespace kiln::workflow
