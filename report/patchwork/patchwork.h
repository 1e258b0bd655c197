/* filled in by the Patchwork part */
#pragma once
