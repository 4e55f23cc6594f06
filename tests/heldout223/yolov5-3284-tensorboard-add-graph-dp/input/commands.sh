cd <path_to_save_to>/
git clone https://github.com/ultralytics/yolov5.git    # At time of writing: commit 683cefead4b9f2a8d062f953a912e46e456ed6ad
cd yolov5

conda create --name yolov5-bug          # Create new environment
conda activate yolov5-bug
conda install python==3.8.*             # Base python install
conda install -c pytorch torchvision    # Install pytorch from official conda channel. 
                                        # This auto configures GPU support and has worked for me in the past
                                        # Currently this installs torchvision==0.9.1, pytorch==1.8.1, cudatoolkit==10.2.89
conda install cudnn                     # More GPU setup

pip install -r requirements.txt         # Get remaining dependencies


# Download yolov5m.pt from https://github.com/ultralytics/yolov5/releases
# Place yolov5m.pt in yolov5/weights

# Download coco128
# Place at ../coco128 

python train.py --weights weights/yolov5m.pt \
                --data data/coco128.yaml \
                --cfg models/yolov5m.yaml \
                --name yolov5-bug
