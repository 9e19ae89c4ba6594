// `cuimg morphology --batch=N`: a folder of images through Morphology, N images to a call.
#ifndef CUIMG_CLIENT_COMMANDS_MORPHOLOGY_BATCH_H_
#define CUIMG_CLIENT_COMMANDS_MORPHOLOGY_BATCH_H_

#include <vector>

#include "client/commands/commands.h"
#include "cuimg/v1/morphology.pb.h"

namespace cuimg {

// Sends every image file of the command.input folder (PNG, JPEG, TIFF, .npy, NRRD, by name) with
// `steps`, command.batch images to a call (each channel of a colour image one image), and writes
// each result to the command.output folder (made when missing) under its file's name. Exit codes
// as the subcommand's: 0 when every file was written, 1 when the server refused any (each named
// on stderr; the others are written), 2 for a folder that is not one or holds no image, 3 for a
// file that cannot be read.
int RunMorphologyBatch(const ConnectionOptions& connection, const MorphologyCommand& command,
                       const std::vector<v1::MorphologyStep>& steps);

}  // namespace cuimg

#endif  // CUIMG_CLIENT_COMMANDS_MORPHOLOGY_BATCH_H_
