/* error.c - the pipeline's error domain, in the part of the module every
 * binary links (pipeline/meson.build). */
#include "pipeline/pipeline.h"

G_DEFINE_QUARK(pgate-pipeline-error-quark, pgate_pipeline_error)
