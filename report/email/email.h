/* filled in by the email part */
#pragma once
